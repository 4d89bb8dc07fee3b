import type { LanguageModel } from '../llm/model.js';

// A Prometheus label value: backslash, double quote and line feed escaped.
function label(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/**
 * The `/metrics` gauge naming the provider and model that answer (`agora_llm_info{provider,model} 1`), or an empty
 * text for an agent without an LLM, so a scrape tells which model its token counts were paid to.
 */
export function llmInfoMetric(llm: LanguageModel | undefined): string {
  if (!llm) return '';
  return [
    '# HELP agora_llm_info The LLM that answers: its provider and model.',
    '# TYPE agora_llm_info gauge',
    `agora_llm_info{provider="${label(llm.provider ?? 'custom')}",model="${label(llm.model)}"} 1`,
    '',
  ].join('\n');
}
