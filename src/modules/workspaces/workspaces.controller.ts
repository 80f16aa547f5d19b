import { OwnedResourceController } from '../../kit/owned/owned-resource.routes.js';
import { CreateWorkspaceDto, UpdateWorkspaceDto, WorkspaceDto } from './dto/workspace.dto.js';
import { WorkspacesService } from './workspaces.service.js';

export class WorkspacesController extends OwnedResourceController({
  path: 'workspaces',
  tag: 'workspaces',
  service: WorkspacesService,
  createDto: CreateWorkspaceDto,
  updateDto: UpdateWorkspaceDto,
  responseDto: WorkspaceDto,
  limited: true,
}) {}
