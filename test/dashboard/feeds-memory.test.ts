// The hub dashboard's live feeds under readers that never read: six feeds held open while the hub's state (~5 MB)
// changes every second for 30 s keep the hub process under 300 MB (they took it from 104 MB to over 1 GB when every
// push was buffered for them without bound). The hub runs in its own process, its memory read from /proc.
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { hashText } from '../../src/protocol/document.js';
import { startHubCommand, type StartedCommand } from '../helpers/cli.js';

const describeLinux = process.platform === 'linux' ? describe : describe.skip;

/** The resident memory of a process, in MB. */
function residentMb(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match![1]) / 1024;
}

/**
 * A protocol document with a long description, not all Latin-1 (the dashboard lists the catalogue with descriptions).
 */
function longDocument(index: number): string {
  return `---\nname: Protocol ${index}\ndescription: ${`${index} → `.repeat(4000).slice(0, 24_000)}\nmultiround: false\n---\n\nThe sender sends JSON.\n`;
}

async function publish(url: string, text: string): Promise<void> {
  const response = await fetch(`${url}/protocols`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ hash: hashText(text), text }),
  });
  expect(response.status).toBe(201);
}

/** A small chain checkpoint: saved again each second with a new time, it changes the hub's state. */
async function putRun(url: string, updatedAt: number): Promise<void> {
  const run = {
    id: 'run-1',
    goal: 'a goal',
    status: 'failed',
    hops: [],
    next: null,
    maxHops: 5,
    createdAt: 1,
    updatedAt,
    owner: 'test#1#1',
    leaseUntil: 0,
  };
  const response = await fetch(`${url}/runs/run-1`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ run, leaseMs: 1000 }),
  });
  expect(response.status).toBe(200);
}

/** A dashboard feed on a raw connection that is never read. */
function stalledFeed(url: string): Socket {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.pause();
  socket.on('error', () => {});
  socket.write(`GET /dashboard/events HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\n\r\n`);
  return socket;
}

describeLinux('hub dashboard feeds that never read', () => {
  let hub: StartedCommand | undefined;
  const feeds: Socket[] = [];
  afterAll(() => {
    for (const feed of feeds) feed.destroy();
    hub?.child.kill('SIGKILL');
  });

  it('keep the hub under 300 MB while its state changes every second for 30 s', async () => {
    hub = await startHubCommand(['--allow-private-agents']);
    const { url, child } = hub;
    // About 5 MB of state: 200 documents of 24 KB descriptions.
    for (let index = 0; index < 200; index++) await publish(url, longDocument(index));
    await putRun(url, Date.now());
    for (let index = 0; index < 6; index++) feeds.push(stalledFeed(url));
    let peak = residentMb(child.pid!);
    for (let second = 0; second < 30; second++) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      // A checkpoint changes every second: the dashboard pushes its whole state to every feed.
      await putRun(url, Date.now());
      peak = Math.max(peak, residentMb(child.pid!));
    }
    expect(child.exitCode).toBeNull();
    expect(peak).toBeLessThan(300);
    // The hub still answers its dashboard.
    expect((await fetch(`${url}/dashboard/api/state`)).status).toBe(200);
  }, 90_000);
});
