import { Module } from '@nestjs/common';
import { SavedSearchesController } from './saved-searches.controller.js';
import { SavedSearchesModule } from './saved-searches.module.js';

@Module({ imports: [SavedSearchesModule], controllers: [SavedSearchesController] })
export class SavedSearchesHttpModule {}
