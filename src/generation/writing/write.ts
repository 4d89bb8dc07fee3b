// Writing a module with the LLM, for both sides: ask, build, type-check, check, feed the errors back.
import { inSpan, TRACING } from '../../telemetry/tracing.js';
import { describeError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { converse } from '../../llm/tool-loop.js';
import { type LanguageModel, type LlmMessage, type LlmUsage } from '../../llm/model.js';
import { bundleForQuickJS } from '../sandbox/quickjs-bundle.js';
import { QuickJSSandbox, type SandboxOptions } from '../sandbox/quickjs.js';
import type { RoutineTypeChecker } from '../checks/typecheck.js';
import type { CheckCase } from '../lifecycle/records.js';

/** A usage sink that also learns which protocol (by name) the LLM call was for. */
export type GenerationUsageSink = (usage: LlmUsage & { model: string }, label: string) => void;

/** The outcome of writing a checked module. */
export type WrittenModule =
  | {
      ok: true;
      code: string;
      checks: string[];
      cases: CheckCase[];
      attempts: number;
      model: string;
      typeCheckMs: number;
    }
  | { ok: false; errors: string[]; attempts: number; model: string };

/** The checks a built, type-checked module must pass: the errors found, and the checks passed. */
export type ModuleChecks = (
  module: QuickJSSandbox,
) => Promise<{ errors: string[]; passed: string[]; cases?: CheckCase[] }>;

type WriteOptions = {
  llm: LanguageModel;
  system: string;
  prompt: string;
  kind: 'routine' | 'task';
  maxAttempts: number;
  typeChecker: RoutineTypeChecker;
  sandbox: SandboxOptions;
  check: ModuleChecks;
  label: string;
  /** The protocol's name, for usage metrics. */
  usageLabel: string;
  logger: Logger;
  onUsage?: GenerationUsageSink;
};

/** A Markdown code fence for prompts and messages: three backticks would need escaping inside template literals. */
export const FENCE = '```';

/** The code of an LLM reply: its first TypeScript fenced block, or the whole reply when it is bare code. */
export function extractCode(text: string): string | undefined {
  const blocks = [...text.matchAll(/```[ \t]*([A-Za-z]*)[^\n]*\n([\s\S]*?)```/g)];
  const typed = blocks.find((block) => /^(ts|typescript|tsx|js|javascript|mjs)$/i.test(block[1] ?? '')) ?? blocks[0];
  if (typed?.[2]?.trim()) return `${typed[2].trim()}\n`;
  if (/\bexport\s+default\b/.test(text)) return `${text.trim()}\n`;
  return undefined;
}

/**
 * Asks the LLM for a module, then builds, type-checks and checks it in a sandbox, feeding the errors back, until
 * it passes or `maxAttempts` are spent.
 */
export function writeCheckedModule(options: WriteOptions): Promise<WrittenModule> {
  if (!TRACING.on) return write(options);
  const attributes = { 'agora.routine.label': options.label, 'agora.routine.kind': options.kind };
  return inSpan('agora.routine.write', { attributes }, async (span) => {
    const written = await write(options);
    span.setAttributes({ 'agora.routine.ok': written.ok, 'agora.routine.attempts': written.attempts });
    return written;
  });
}

/** Traced when tracing is on (a step's span, else the step itself). */
function step<T>(name: string, work: () => Promise<T>): Promise<T> {
  return TRACING.on ? inSpan(name, {}, work) : work();
}

async function write(options: WriteOptions): Promise<WrittenModule> {
  let messages: LlmMessage[] = [{ role: 'user', content: options.prompt }];
  let errors: string[] = [];
  const model = options.llm.model;
  options.typeChecker.warm();
  for (let attempt = 1; attempt <= options.maxAttempts; attempt++) {
    const result = await converse(options.llm, {
      intent: { purpose: options.kind === 'task' ? 'task-routine' : 'routine' },
      system: options.system,
      messages,
      maxSteps: 1,
      temperature: 0,
      maxTokens: 8192,
      ...(options.onUsage
        ? { onUsage: (usage: LlmUsage & { model: string }) => options.onUsage?.(usage, options.usageLabel) }
        : {}),
    });
    messages = result.messages;
    const code = extractCode(result.text);
    // Building, type-checking and checking take seconds: said as it happens, not only at the end.
    options.logger.info(
      `${options.label}: ${options.kind} attempt ${attempt}/${options.maxAttempts}: reply received, building and type-checking`,
    );
    let typeCheckMs = 0;
    if (code === undefined) {
      errors = [`the reply holds no ${FENCE}ts code block`];
    } else {
      const [built, typed] = await Promise.all([
        bundleForQuickJS(code).then(
          (bundle) => ({ bundle, error: undefined }),
          (error: unknown) => ({ bundle: undefined, error: error instanceof Error ? error.message : String(error) }),
        ),
        step('agora.routine.typecheck', () => options.typeChecker.check(code, options.kind)).catch(
          (error: unknown) => ({ errors: [describeError(error)], ms: 0 }),
        ),
      ]);
      typeCheckMs = typed.ms;
      errors = [
        ...(built.error ? [`build: ${built.error}`] : []),
        ...typed.errors.map((error) => `type-check: ${error}`),
      ];
      if (!errors.length && built.bundle) {
        const module = new QuickJSSandbox(built.bundle, { ...options.sandbox, name: `agora check ${options.label}` });
        try {
          options.logger.info(
            `${options.label}: ${options.kind} attempt ${attempt}/${options.maxAttempts}: type-checked in ${typeCheckMs} ms, running its checks`,
          );
          const checked = await step('agora.routine.checks', () => options.check(module));
          errors = checked.errors;
          if (!errors.length)
            return {
              ok: true,
              code,
              checks: [`type-check (${typeCheckMs} ms)`, ...checked.passed],
              cases: checked.cases ?? [],
              attempts: attempt,
              model,
              typeCheckMs,
            };
        } finally {
          await module.close();
        }
      }
    }
    options.logger.info(
      `${options.label}: routine attempt ${attempt}/${options.maxAttempts} failed: ${errors[0] ?? 'unknown error'}${errors.length > 1 ? ` (+${errors.length - 1} more)` : ''}`,
    );
    if (attempt < options.maxAttempts) {
      messages = [
        ...messages,
        {
          role: 'user',
          content: [
            `Your module failed these checks:`,
            ...errors.slice(0, 20).map((error) => `- ${error}`),
            '',
            `Fix every problem and reply with the whole corrected module in one ${FENCE}ts code block.`,
          ].join('\n'),
        },
      ];
    }
  }
  return { ok: false, errors, attempts: options.maxAttempts, model };
}

// ---------------------------------------------------------------------------------------------------------------
// Comparing replies

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${stableJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** Whether two JSON values are equal, whatever the order of their keys. */
export function sameValue(a: unknown, b: unknown): boolean {
  return stableJson(a) === stableJson(b);
}

/** A value as JSON, cut at `max` characters, for error messages. */
export function preview(value: unknown, max = 240): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
