import { Injectable } from '@nestjs/common';
import type { Prisma, SavedSearch } from '../../generated/prisma/client.js';
import { defineOwnedResource } from '../../kit/owned/owned-resource.js';
import { OwnedResourceService } from '../../kit/owned/owned-resource.service.js';
import { savedSearchRows } from './saved-searches.repository.js';
import type { CreateSavedSearchDto, SavedSearchDto, UpdateSavedSearchDto } from './dto/saved-search.dto.js';

export const toSavedSearchResponse = (row: SavedSearch): SavedSearchDto => ({
  id: row.id,
  user_id: row.userId,
  name: row.name,
  query: row.query,
  filters: row.filters as Record<string, unknown>,
  created_at: row.createdAt,
  updated_at: row.updatedAt,
});

@Injectable()
export class SavedSearchesService extends OwnedResourceService<
  SavedSearch,
  CreateSavedSearchDto,
  UpdateSavedSearchDto,
  SavedSearchDto
> {
  protected readonly resource = defineOwnedResource({
    type: 'saved_search',
    label: 'saved search',
    plural: 'saved searches',
    table: savedSearchRows,
    sqlTable: 'saved_searches',
    limit: 'savedSearches',
    toCreate: (dto: CreateSavedSearchDto): Omit<Prisma.SavedSearchUncheckedCreateInput, 'userId'> => ({
      name: dto.name,
      query: dto.query,
      filters: (dto.filters ?? {}) as Prisma.InputJsonObject,
    }),
    toUpdate: (dto: UpdateSavedSearchDto): Prisma.SavedSearchUpdateInput => ({
      name: dto.name,
      query: dto.query,
      filters: dto.filters as Prisma.InputJsonObject | undefined,
    }),
    toResponse: toSavedSearchResponse,
  });
}
