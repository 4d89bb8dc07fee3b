import { defineRoutine, z } from 'agora-agents';

const input = z.discriminatedUnion('action', [
  z.object({
    action: z.literal('add'),
    item: z.string().trim().min(1).max(200),
    quantity: z.number().int().positive().max(1_000_000).default(1),
  }),
  z.object({ action: z.literal('remove'), item: z.string().trim().min(1) }),
  z.object({ action: z.literal('clear') }),
  z.object({ action: z.literal('list') }),
]);

type Items = Record<string, number>;

// The list lives in the conversation's state, so any process sharing the store can take the next turn.
export default defineRoutine({
  input,
  handle(body, context) {
    const items: Items = { ...((context.conversation.state.items as Items | undefined) ?? {}) };
    if (body.action === 'add') items[body.item] = (items[body.item] ?? 0) + body.quantity;
    if (body.action === 'remove') {
      if (!(body.item in items)) return { error: 'Unknown item' };
      delete items[body.item];
    }
    if (body.action === 'clear') for (const key of Object.keys(items)) delete items[key];
    context.conversation.state.items = items;
    const list = Object.keys(items)
      .sort()
      .map((item) => ({ item, quantity: items[item]! }));
    return { items: list, total: list.reduce((sum, entry) => sum + entry.quantity, 0) };
  },
});
