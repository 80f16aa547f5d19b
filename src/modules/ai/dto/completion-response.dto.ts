import { ApiProperty } from '@nestjs/swagger';
import { ApiInt } from '../../../common/openapi/api-fields.js';
export class CompletionUsageDto {
  @ApiInt({ minimum: 0, example: 20 })
  prompt_tokens!: number;
  @ApiInt({ minimum: 0, example: 180 })
  completion_tokens!: number;
}

export class CompletionResponseDto {
  /** The request's job id; it is also the job_id of its rows in GET /api/v1/credits. */
  @ApiProperty({ type: String, example: 'ai-9b2f0c4e-51d7-4a36-8f0e-2d6c1a7b3e95' })
  id!: string;
  /** The model's answer; null when it refused (see `refusal`). */
  @ApiProperty({ type: String, example: 'Hello! How can I help?' })
  content!: string | null;
  /** Why the model refused (OpenAI-compatible `message.refusal`); null for an answer. */
  refusal!: string | null;
  usage!: CompletionUsageDto;
  /** Credits this call cost (the reservation minus what the settle gave back). */
  @ApiInt({ minimum: 0, example: 1 })
  credits_charged!: number;
}
