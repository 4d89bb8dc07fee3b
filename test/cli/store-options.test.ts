import { describe, expect, it } from 'vitest';
import { storeOf } from '../../src/cli/_options.js';

const args = (values: Record<string, string>) => ({ values, positionals: [] });

describe('the --store connection flags', () => {
  it('fold --store-ca, --store-wait-replicas and --store-wait-ms into the URL, which wins where it sets them', () => {
    expect(
      storeOf(args({ store: 'rediss://h:6380/0?prefix=a:', 'store-ca': '/ca.pem', 'store-wait-replicas': '2' })),
    ).toBe('rediss://h:6380/0?prefix=a%3A&ca=%2Fca.pem&waitReplicas=2');
    expect(storeOf(args({ store: 'redis-cluster://h:1?waitMs=100', 'store-wait-ms': '900' }))).toBe(
      'redis-cluster://h:1?waitMs=100',
    );
    expect(storeOf(args({ store: 'memory', 'store-ca': '/ca.pem' }))).toBe('memory');
    expect(storeOf(args({}))).toBeUndefined();
  });
});
