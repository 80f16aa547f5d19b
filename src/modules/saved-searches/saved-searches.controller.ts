import { OwnedResourceController } from '../../kit/owned/owned-resource.routes.js';
import { CreateSavedSearchDto, SavedSearchDto, UpdateSavedSearchDto } from './dto/saved-search.dto.js';
import { SavedSearchesService } from './saved-searches.service.js';

export class SavedSearchesController extends OwnedResourceController({
  path: 'saved_searches',
  tag: 'saved searches',
  service: SavedSearchesService,
  createDto: CreateSavedSearchDto,
  updateDto: UpdateSavedSearchDto,
  responseDto: SavedSearchDto,
  limited: true,
}) {}
