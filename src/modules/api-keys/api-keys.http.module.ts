import { Module } from '@nestjs/common';
import { ApiKeysController } from './api-keys.controller.js';
import { ApiKeysModule } from './api-keys.module.js';

@Module({ imports: [ApiKeysModule], controllers: [ApiKeysController] })
export class ApiKeysHttpModule {}
