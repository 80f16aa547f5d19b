import type { TierLimits } from '../../config/project.config.js';
import type { ProjectConfig } from '../../config/project.config.js';

/** max_tokens when the request gives none: a modest default, never above the tier's ceiling. */
export const DEFAULT_MAX_TOKENS = 1024;
/** Per-message framing tokens of chat formats (role markers, separators), generously rounded up. */
const TOKENS_PER_MESSAGE = 4;
const TOKENS_PER_REPLY = 3;

/** Credits for a number of tokens: rounded up, at least 1 per call. */
export function creditsForTokens(tokens: number, creditsPer1kTokens: number): number {
  // The epsilon keeps float noise (0.1 * 3) from rounding a whole number up.
  return Math.max(1, Math.ceil((tokens * creditsPer1kTokens) / 1000 - 1e-9));
}

/**
 * An upper bound of the prompt's tokens that needs no tokenizer: byte-level BPE tokens are at least one
 * byte each, so UTF-8 bytes plus the framing overhead cannot be exceeded.
 */
export function promptTokenBound(messages: { content: string }[]): number {
  const bytes = messages.reduce((sum, m) => sum + Buffer.byteLength(m.content, 'utf8'), 0);
  return bytes + TOKENS_PER_MESSAGE * messages.length + TOKENS_PER_REPLY;
}

/** The reservation: what the call can cost at most (prompt bound + max_tokens). */
export function estimateCredits(
  messages: { content: string }[],
  maxTokens: number,
  creditsPer1kTokens: number,
): number {
  return creditsForTokens(promptTokenBound(messages) + maxTokens, creditsPer1kTokens);
}

export function actualCredits(
  usage: { prompt_tokens: number; completion_tokens: number },
  creditsPer1kTokens: number,
): number {
  return creditsForTokens(usage.prompt_tokens + usage.completion_tokens, creditsPer1kTokens);
}

/** The tier's limits; a tier missing from the configuration gets FREE's (never unlimited). */
export function tierLimits(project: ProjectConfig, tier: string): TierLimits {
  return (Object.hasOwn(project.tiers, tier) ? project.tiers[tier] : project.tiers.FREE).limits;
}
