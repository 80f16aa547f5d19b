import { Body, Controller, Delete, Get, Header, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { CurrentPrincipal } from '../../common/decorators/current-user.decorator.js';
import type { Principal } from '../../common/principal.js';
import { PageQueryDto } from '../../common/paging/page-query.dto.js';
import {
  ApiOwnedLimitReached,
  ApiOwnedNotFound,
  ApiOwnedPageResponse,
} from '../../kit/owned/owned-api.decorators.js';
import { ApiKeysService } from './api-keys.service.js';
import { ApiKeyDto, CreateApiKeyDto, CreatedApiKeyDto } from './dto/api-key.dto.js';
import { ApiUuidParam } from '../../common/openapi/api-fields.js';
import { ApiErrors } from '../../common/openapi/api-errors.decorator.js';

/** ApiKeysService refuses an API key principal itself (the guard does not: reading the list is fine). */
const ApiKeyManagementRefused = () =>
  ApiErrors({ 403: { api_key_not_allowed: 'called with an API key: a key cannot mint or revoke keys' } });

/** The owned-resource routes minus PATCH; DELETE revokes. Written out because create returns the secret. */
@ApiTags('api keys')
@ApiBearerAuth()
@Controller('api_keys')
export class ApiKeysController {
  constructor(private readonly apiKeys: ApiKeysService) {}

  @ApiOperation({
    summary: 'Create an API key',
    description:
      'The full key is in `secret` and shown only in this answer. Refused when called with an API key.',
  })
  @Post()
  // The body holds the secret: no cache may keep it.
  @Header('Cache-Control', 'no-store')
  @ApiCreatedResponse({ type: CreatedApiKeyDto, description: 'The full key is in `secret`, shown only here' })
  @ApiKeyManagementRefused()
  @ApiErrors({ 400: { validation_failed: 'an invalid body, or expires_at not in the future' } })
  @ApiOwnedLimitReached('active API keys')
  create(@CurrentPrincipal() principal: Principal, @Body() dto: CreateApiKeyDto): Promise<CreatedApiKeyDto> {
    return this.apiKeys.create(principal, dto);
  }

  @ApiOperation({
    summary: 'List my API keys',
    description: 'Newest first; never the secrets, only their visible prefix.',
  })
  @Get()
  @ApiOwnedPageResponse(ApiKeyDto)
  list(@CurrentPrincipal() principal: Principal, @Query() query: PageQueryDto) {
    return this.apiKeys.list(principal, { page: query.page, pageSize: query.page_size });
  }

  @ApiOperation({ summary: 'Get one API key' })
  @ApiUuidParam()
  @Get(':id')
  @ApiOkResponse({ type: ApiKeyDto })
  @ApiOwnedNotFound()
  get(@CurrentPrincipal() principal: Principal, @Param('id') id: string): Promise<ApiKeyDto> {
    return this.apiKeys.get(principal, id);
  }

  @ApiOperation({
    summary: 'Revoke an API key',
    description: 'Also answers 204 when it was already revoked. Refused when called with an API key.',
  })
  @ApiUuidParam()
  @Delete(':id')
  @HttpCode(204)
  @ApiNoContentResponse({ description: 'Revoked (also when it already was)' })
  @ApiKeyManagementRefused()
  @ApiOwnedNotFound()
  async revoke(@CurrentPrincipal() principal: Principal, @Param('id') id: string): Promise<void> {
    await this.apiKeys.remove(principal, id);
  }
}
