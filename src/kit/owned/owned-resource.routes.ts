import {
  applyDecorators,
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Patch,
  Post,
  Query,
  type Type,
} from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiBody,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { ApiUuidParam } from '../../common/openapi/api-fields.js';
import { CurrentPrincipal } from '../../common/decorators/current-user.decorator.js';
import type { Principal } from '../../common/principal.js';
import { PageQueryDto } from '../../common/paging/page-query.dto.js';
import { ApiOwnedLimitReached, ApiOwnedNotFound, ApiOwnedPageResponse } from './owned-api.decorators.js';
import type { OwnedResourceService } from './owned-resource.service.js';
import type { OwnedRow } from './owned.repository.js';

export interface OwnedControllerOptions<CreateDto extends object, UpdateDto extends object> {
  /** Path segment under /api/v1, e.g. `saved_searches`. */
  path: string;
  tag: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  service: Type<OwnedResourceService<any, CreateDto, UpdateDto, unknown>>;
  createDto: Type<CreateDto>;
  updateDto: Type<UpdateDto>;
  responseDto: Type<unknown>;
  /** The resource in the operations' summaries; default: the tag without its final `s`. */
  noun?: string;
  /** The service's resource has a tier limit (`OwnedResource.limit`): create documents 409 limit_reached. */
  limited: boolean;
}

/**
 * The five routes of an owned resource (POST, GET list, GET, PATCH, DELETE), bound to its service and
 * DTOs. Use it as a base class so the controller keeps its own name (logs, OpenAPI operation ids):
 * `export class SavedSearchesController extends OwnedResourceController({...}) {}`.
 */
export function OwnedResourceController<CreateDto extends object, UpdateDto extends object>(
  options: OwnedControllerOptions<CreateDto, UpdateDto>,
) {
  const noun = options.noun ?? options.tag.replace(/s$/, '');
  @ApiTags(options.tag)
  @ApiBearerAuth()
  @Controller(options.path)
  class OwnedController {
    constructor(
      @Inject(options.service)
      readonly service: OwnedResourceService<OwnedRow, CreateDto, UpdateDto, unknown>,
    ) {}

    @ApiOperation({ summary: `Create a ${noun}` })
    @Post()
    @ApiBody({ type: options.createDto })
    @ApiCreatedResponse({ type: options.responseDto })
    @applyDecorators(...(options.limited ? [ApiOwnedLimitReached(options.tag)] : []))
    create(@CurrentPrincipal() principal: Principal, @Body() dto: CreateDto) {
      return this.service.create(principal, dto);
    }

    @ApiOperation({
      summary: `List my ${options.tag}`,
      description: 'Newest first. Invalid paging values are reset, never refused.',
    })
    @Get()
    @ApiOwnedPageResponse(options.responseDto)
    list(@CurrentPrincipal() principal: Principal, @Query() query: PageQueryDto) {
      return this.service.list(principal, { page: query.page, pageSize: query.page_size });
    }

    @ApiOperation({ summary: `Get one ${noun}` })
    @ApiUuidParam()
    @Get(':id')
    @ApiOkResponse({ type: options.responseDto })
    @ApiOwnedNotFound()
    get(@CurrentPrincipal() principal: Principal, @Param('id') id: string) {
      return this.service.get(principal, id);
    }

    @ApiOperation({ summary: `Update a ${noun}`, description: 'Only the fields sent change.' })
    @ApiUuidParam()
    @Patch(':id')
    @ApiBody({ type: options.updateDto })
    @ApiOkResponse({ type: options.responseDto })
    @ApiOwnedNotFound()
    update(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Body() dto: UpdateDto) {
      return this.service.update(principal, id, dto);
    }

    @ApiOperation({ summary: `Delete a ${noun}` })
    @ApiUuidParam()
    @Delete(':id')
    @HttpCode(204)
    @ApiNoContentResponse({ description: 'Deleted' })
    @ApiOwnedNotFound()
    async remove(@CurrentPrincipal() principal: Principal, @Param('id') id: string): Promise<void> {
      await this.service.remove(principal, id);
    }
  }

  // A generic parameter reflects as Object, which the global ValidationPipe would pass through
  // unvalidated: declare the real DTO classes as the parameter types.
  Reflect.defineMetadata(
    'design:paramtypes',
    [Object, options.createDto],
    OwnedController.prototype,
    'create',
  );
  Reflect.defineMetadata(
    'design:paramtypes',
    [Object, String, options.updateDto],
    OwnedController.prototype,
    'update',
  );
  return OwnedController;
}
