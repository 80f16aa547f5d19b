import { Module } from '@nestjs/common';
import { WorkspacesController } from './workspaces.controller.js';
import { WorkspacesModule } from './workspaces.module.js';

@Module({ imports: [WorkspacesModule], controllers: [WorkspacesController] })
export class WorkspacesHttpModule {}
