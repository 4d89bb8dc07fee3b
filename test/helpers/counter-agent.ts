// The counter protocol: a multiround protocol whose routine counts the turns of a conversation and names the process
// that answered, so a test sees whether a conversation continued (1, 2, 3) and which worker answered each turn.
import { hashText } from '../../src/protocol/document.js';

export const COUNTER_PD =
  '---\nname: Counter\ndescription: Adds numbers over turns.\nmultiround: true\n---\nThe sender sends JSON {"add": number}; the receiver replies JSON {"count": number}.\n';

export const COUNTER_ROUTINE = `
export default async function (body: { add?: number }, context: any) {
  const state = context.conversation.state;
  state.count = (typeof state.count === 'number' ? state.count : 0) + (body.add ?? 1);
  return { count: state.count, pid: process.pid };
}
`;

export const COUNTER_HASH = hashText(COUNTER_PD);

/** The counter routine's reply. */
export type CounterReply = { count: number; pid: number };

/** The files of an agent folder serving the counter protocol. */
export const COUNTER_FILES = { 'protocols/counter.md': COUNTER_PD, 'routines/counter.ts': COUNTER_ROUTINE };
