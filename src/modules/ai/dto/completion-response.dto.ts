export class CompletionUsageDto {
  prompt_tokens!: number;
  completion_tokens!: number;
}

export class CompletionResponseDto {
  /** The request's job id; it is also the job_id of its rows in GET /api/v1/credits. */
  id!: string;
  /** The model's answer; null when it refused (see `refusal`). */
  content!: string | null;
  /** Why the model refused (OpenAI-compatible `message.refusal`); null for an answer. */
  refusal!: string | null;
  usage!: CompletionUsageDto;
  /** Credits this call cost (the reservation minus what the settle gave back). */
  credits_charged!: number;
}
