import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ApiTimestamp, ApiUuid } from '../../../common/openapi/api-fields.js';
import { TEMPLATE_KEYS } from '../../email/email.templates.js';
import { AudienceDto } from './create-broadcast.dto.js';

export class BroadcastCountsDto {
  @ApiProperty({ type: 'integer', description: 'Audience size (final once the run ends).' })
  recipients!: number;
  @ApiProperty({ type: 'integer' })
  sent!: number;
  @ApiProperty({ type: 'integer' })
  failed!: number;
  @ApiProperty({
    type: 'integer',
    description: 'Left out by the consent gate (no consent, disposable address).',
  })
  skipped!: number;
}

export class BroadcastResponseDto {
  @ApiUuid()
  id!: string;
  @ApiProperty({ enum: ['queued', 'running', 'done', 'failed'] })
  status!: string;
  @ApiProperty({ enum: TEMPLATE_KEYS, example: 'newsletter' })
  template_key!: string;
  @ApiProperty({ enum: ['transactional', 'marketing'] })
  kind!: string;
  @ApiProperty({ type: AudienceDto })
  audience!: AudienceDto;
  @ApiProperty()
  bypass_consent!: boolean;
  @ApiProperty({ type: BroadcastCountsDto })
  counts!: BroadcastCountsDto;
  @ApiProperty({ example: 'user:user_2abcDEF3ghiJKL4mnoPQR5stu' })
  created_by!: string;
  @ApiTimestamp()
  created_at!: string;
  @ApiTimestamp({ nullable: true })
  started_at!: string | null;
  @ApiTimestamp({ nullable: true })
  finished_at!: string | null;
  @ApiPropertyOptional({ nullable: true, type: String })
  error!: string | null;
}

export class BroadcastListDto {
  @ApiProperty({ type: [BroadcastResponseDto] })
  items!: BroadcastResponseDto[];
  @ApiProperty({ type: 'integer' })
  total!: number;
  @ApiProperty({ type: 'integer', minimum: 1 })
  page!: number;
  @ApiProperty({ type: 'integer', minimum: 1, maximum: 100 })
  page_size!: number;
}
