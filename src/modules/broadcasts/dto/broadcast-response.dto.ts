import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { AudienceDto } from './create-broadcast.dto.js';

export class BroadcastCountsDto {
  @ApiProperty({ description: 'Audience size (final once the run ends).' })
  recipients!: number;
  @ApiProperty()
  sent!: number;
  @ApiProperty()
  failed!: number;
  @ApiProperty({ description: 'Left out by the consent gate (no consent, disposable address).' })
  skipped!: number;
}

export class BroadcastResponseDto {
  @ApiProperty({ format: 'uuid' })
  id!: string;
  @ApiProperty({ enum: ['queued', 'running', 'done', 'failed'] })
  status!: string;
  @ApiProperty()
  template_key!: string;
  @ApiProperty({ enum: ['transactional', 'marketing'] })
  kind!: string;
  @ApiProperty({ type: AudienceDto })
  audience!: AudienceDto;
  @ApiProperty()
  bypass_consent!: boolean;
  @ApiProperty({ type: BroadcastCountsDto })
  counts!: BroadcastCountsDto;
  @ApiProperty()
  created_by!: string;
  @ApiProperty()
  created_at!: string;
  @ApiPropertyOptional({ nullable: true, type: String })
  started_at!: string | null;
  @ApiPropertyOptional({ nullable: true, type: String })
  finished_at!: string | null;
  @ApiPropertyOptional({ nullable: true, type: String })
  error!: string | null;
}

export class BroadcastListDto {
  @ApiProperty({ type: [BroadcastResponseDto] })
  items!: BroadcastResponseDto[];
  @ApiProperty()
  total!: number;
  @ApiProperty()
  page!: number;
  @ApiProperty()
  page_size!: number;
}
