import { ApiProperty } from '@nestjs/swagger';
import { ApiEnum, ApiInt, ApiTimestamp } from '../../../common/openapi/api-fields.js';

// The probes' answers as HealthService builds them (health.service.ts): public, so a status page or a
// monitor typed from the client reads them without a cast.

export const COMPONENT_NAMES = ['database', 'redis', 'chromadb'] as const;
export const COMPONENT_STATUSES = ['operational', 'degraded', 'down'] as const;
const ENVIRONMENTS = ['development', 'test', 'staging', 'production'];

/** GET /health */
export class LivenessDto {
  @ApiEnum(['ok'])
  status!: 'ok';
  @ApiProperty({ type: String, example: 'subscription-service' })
  project_slug!: string;
  @ApiEnum(ENVIRONMENTS, { example: 'production' })
  environment!: string;
}

/** One dependency probe of GET /health/ready. */
export class CheckResultDto {
  @ApiEnum(COMPONENT_NAMES)
  name!: (typeof COMPONENT_NAMES)[number];
  ok!: boolean;
  /** `ok` (`not configured` for an unset optional store), or the raw exception text of the failure. */
  @ApiProperty({ type: String, example: 'ok' })
  message!: string;
  /** How long the probe took, in milliseconds. */
  @ApiInt({ minimum: 0, example: 3 })
  latency_ms!: number;
}

/** GET /health/ready: 200 when every check passed, else 503 with the same body. */
export class ReadinessReportDto {
  /** Whether every check passed (the status is 503 when not). */
  ok!: boolean;
  @ApiTimestamp()
  checked_at!: string;
  @ApiProperty({ type: [CheckResultDto] })
  checks!: CheckResultDto[];
}

/** One component of GET /status, without the failure text. */
export class ComponentStatusDto {
  @ApiEnum(COMPONENT_NAMES)
  name!: (typeof COMPONENT_NAMES)[number];
  /** `down`: its check failed; `degraded`: slower than its threshold. */
  @ApiEnum(COMPONENT_STATUSES)
  status!: (typeof COMPONENT_STATUSES)[number];
}

/** GET /status (always 200). */
export class StatusReportDto {
  @ApiProperty({ type: String, example: 'subscription-service' })
  project!: string;
  @ApiTimestamp()
  checked_at!: string;
  /** `down` when a component is down, else `degraded` when one is degraded, else `operational`. */
  @ApiEnum(COMPONENT_STATUSES)
  overall!: (typeof COMPONENT_STATUSES)[number];
  @ApiProperty({ type: [ComponentStatusDto] })
  components!: ComponentStatusDto[];
}
