import { ApiParam, ApiProperty, type ApiPropertyOptions } from '@nestjs/swagger';
import { projectConfig } from '../../config/project.config.js';
import { SubscriptionStatus } from '../../generated/prisma/enums.js';

// Property decorators for the OpenAPI document. The Swagger plugin already documents each DTO property's
// type, optionality, nullability and description (from its comment); these add what TypeScript cannot
// say: formats, integer vs number, enums and examples. They merge with the plugin's metadata.

interface Extra {
  description?: string;
  example?: unknown;
  minimum?: number;
  maximum?: number;
  default?: unknown;
  required?: boolean;
  nullable?: boolean;
}

const property = (options: Record<string, unknown>) => ApiProperty(options as ApiPropertyOptions);

export const EXAMPLE_UUID = '7c9e6679-7425-40de-944b-e07fc1f90ae7';
export const EXAMPLE_TIME = '2026-11-24T09:30:00.000Z';

/** The tiers of the checked-in project configuration (the environment can map prices, not add tiers). */
export const TIERS = Object.keys(projectConfig.tiers);
export const PAID_TIERS = TIERS.filter((tier) => tier !== 'FREE');
export const SUBSCRIPTION_STATUSES = Object.values(SubscriptionStatus);
export const ApiUuid = (extra: Extra = {}) =>
  property({ type: String, format: 'uuid', example: EXAMPLE_UUID, ...extra });

export const ApiTimestamp = (extra: Extra = {}) =>
  property({ type: String, format: 'date-time', example: EXAMPLE_TIME, ...extra });

export const ApiEmail = (extra: Extra = {}) =>
  property({ type: String, format: 'email', example: 'ada@example.com', ...extra });

export const ApiInt = (extra: Extra = {}) => property({ type: 'integer', ...extra });

export const ApiEnum = (values: readonly string[], extra: Extra = {}) =>
  property({ type: String, enum: [...values], example: values[0], ...extra });

export const ApiTier = (extra: Extra = {}) => ApiEnum(TIERS, { example: 'PRO', ...extra });

/** A `{id}` path parameter that is a UUID (a malformed one answers 404 like a missing row). */
export const ApiUuidParam = (name = 'id') =>
  ApiParam({ name, format: 'uuid', example: EXAMPLE_UUID, type: String });
