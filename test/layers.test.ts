import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layers of `src/`, bottom first, as the README's "How the code is laid out" draws them. A part is a top-level
 * folder (`receiver.ts` and `receiver/` are one part) or a file directly in `src/` without `.ts`. A part may import
 * its own layer and the layers below; never one above. To add a folder, put its name in the layer it belongs to.
 */
const LAYERS: readonly (readonly string[])[] = [
  [
    'errors',
    '_defaults',
    'schemas',
    'log',
    'metrics',
    '_files',
    '_queue',
    '_slices',
    '_redis',
    '_redis-connection',
    '_redis-target',
    '_slug',
    '_plural',
    '_optional',
    '_usage',
    // OpenTelemetry's API: spans opened on every floor, and the SDK started by the CLI.
    'telemetry',
  ],
  // The one HTTP toolkit, inbound (edge) and outbound (net): it knows no protocol.
  ['edge', 'memory', 'net'],
  ['protocol'],
  ['conversation', 'routine', 'tool', 'llm'],
  ['negotiation'],
  ['receiver', 'sender', 'conformance'],
  ['generation'],
  // The mounts: the Agora wire and the face kit; the bindings (one folder per foreign protocol, its face and its peer
  // client, never the hub), the hub, the dashboards.
  ['agora', 'faces'],
  ['bindings'],
  ['hub'],
  ['dashboard'],
  ['express', 'agent', 'init', 'init-dependency', 'testing'],
  ['cli', 'index', 'exports'],
];

/** Parts of one layer that must not import each other (in either direction). */
const APART: readonly (readonly [string, string])[] = [
  ['receiver', 'sender'],
  ['agora', 'faces'],
];

const SRC = resolve(import.meta.dirname, '../src');

type Import = { from: string; to: string; file: string; specifier: string };

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The part a file of `src/` belongs to. */
function partOf(file: string): string {
  const [head = '', ...rest] = relative(SRC, file).split('/');
  return rest.length > 0 ? head : head.replace(/\.ts$/, '');
}

/** Every relative import of a source: `import … from`, `export … from`, `import '…'` and `import('…')`. */
function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [
    ...text.matchAll(
      /(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/gm,
    ),
  ]
    .map((match) => match[1] ?? match[2] ?? match[3]!)
    .filter((specifier) => specifier.startsWith('.'));
  return specifiers.map((specifier) => ({
    from: partOf(file),
    to: partOf(resolve(dirname(file), specifier)),
    file: relative(SRC, file),
    specifier,
  }));
}

const layerOf = new Map(LAYERS.flatMap((parts, layer) => parts.map((part) => [part, layer] as const)));
const files = sourceFiles(SRC);
const imports = files.flatMap(importsOf).filter((edge) => edge.from !== edge.to);

/** Circles in the graph of parts (Tarjan's strongly connected components of more than one part). */
function circles(edges: readonly Import[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) next.set(from, (next.get(from) ?? new Set()).add(to));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (part: string): void => {
    index.set(part, index.size);
    low.set(part, index.get(part)!);
    stack.push(part);
    for (const target of next.get(part) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(part, Math.min(low.get(part)!, low.get(target)!));
      } else if (stack.includes(target)) low.set(part, Math.min(low.get(part)!, index.get(target)!));
    }
    if (low.get(part) === index.get(part)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        component.push(member);
      } while (member !== part);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const part of next.keys()) if (!index.has(part)) visit(part);
  return found;
}

describe('the layers of src/', () => {
  it('reads the imports of every source file', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(imports.some((edge) => edge.from === 'cli' && edge.to === 'hub')).toBe(true);
  });

  it('places every part of src/ in a layer', () => {
    const unknown = [...new Set(files.map(partOf))].filter((part) => !layerOf.has(part));
    expect(
      unknown,
      `src/${unknown[0]} is in no layer: add it to LAYERS in test/layers.test.ts and to the README's "How the code is laid out"`,
    ).toEqual([]);
  });

  it('imports nothing from a layer above', () => {
    const upward = imports
      .filter(
        (edge) => layerOf.has(edge.from) && layerOf.has(edge.to) && layerOf.get(edge.to)! > layerOf.get(edge.from)!,
      )
      .map((edge) => `src/${edge.file} imports '${edge.specifier}': ${edge.to} sits above ${edge.from}`);
    expect(upward).toEqual([]);
  });

  it('keeps the receiver free of HTTP: it never imports the edge', () => {
    const crossing = imports
      .filter((edge) => edge.from === 'receiver' && edge.to === 'edge')
      .map((edge) => `src/${edge.file} imports '${edge.specifier}'`);
    expect(crossing).toEqual([]);
  });

  it('keeps apart the parts that must not know each other', () => {
    const crossing = imports
      .filter((edge) =>
        APART.some(
          ([one, other]) => (edge.from === one && edge.to === other) || (edge.from === other && edge.to === one),
        ),
      )
      .map((edge) => `src/${edge.file} imports '${edge.specifier}'`);
    expect(crossing).toEqual([]);
  });

  it('has no circle between parts', () => {
    expect(circles(imports).map((component) => component.join(' ↔ '))).toEqual([]);
  });

  it('has no circle between files', () => {
    const fileEdges = files.flatMap((file) =>
      importsOf(file).map((edge) => ({
        ...edge,
        from: relative(SRC, file),
        to: relative(SRC, resolve(dirname(file), edge.specifier)).replace(/\.js$/, '.ts'),
      })),
    );
    expect(circles(fileEdges).map((component) => component.join(' ↔ '))).toEqual([]);
  });

  it('imports no folder-internal (`_`-prefixed) file from another folder', () => {
    const reaching = files.flatMap((file) =>
      importsOf(file)
        // The package's own utilities sit directly in src/ (`_files.ts`, `_queue.ts`…) and serve every folder.
        .filter(
          (edge) =>
            /(^|\/)_[^/]+$/.test(edge.specifier) &&
            ![dirname(file), SRC].includes(dirname(resolve(dirname(file), edge.specifier))),
        )
        .map((edge) => `src/${edge.file} imports '${edge.specifier}'`),
    );
    expect(reaching).toEqual([]);
  });

  it('finds a circle when there is one', () => {
    const edge = (from: string, to: string): Import => ({ from, to, file: `${from}.ts`, specifier: `./${to}.js` });
    expect(circles([edge('a', 'b'), edge('b', 'c'), edge('c', 'a'), edge('c', 'd')])).toEqual([['a', 'b', 'c']]);
  });
});
