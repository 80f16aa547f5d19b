import { Injectable } from '@nestjs/common';
import type { Prisma, Workspace } from '../../generated/prisma/client.js';
import { defineOwnedResource } from '../../kit/owned/owned-resource.js';
import { OwnedResourceService } from '../../kit/owned/owned-resource.service.js';
import { workspaceRows } from './workspaces.repository.js';
import type { CreateWorkspaceDto, UpdateWorkspaceDto, WorkspaceDto } from './dto/workspace.dto.js';

export const toWorkspaceResponse = (row: Workspace): WorkspaceDto => ({
  id: row.id,
  user_id: row.userId,
  name: row.name,
  description: row.description,
  created_at: row.createdAt,
  updated_at: row.updatedAt,
});

@Injectable()
export class WorkspacesService extends OwnedResourceService<
  Workspace,
  CreateWorkspaceDto,
  UpdateWorkspaceDto,
  WorkspaceDto
> {
  protected readonly resource = defineOwnedResource({
    type: 'workspace',
    label: 'workspace',
    plural: 'workspaces',
    table: workspaceRows,
    sqlTable: 'workspaces',
    limit: 'workspaces',
    toCreate: (dto: CreateWorkspaceDto): Omit<Prisma.WorkspaceUncheckedCreateInput, 'userId'> => ({
      name: dto.name,
      description: dto.description ?? null,
    }),
    toUpdate: (dto: UpdateWorkspaceDto): Prisma.WorkspaceUpdateInput => ({
      name: dto.name,
      description: dto.description,
    }),
    toResponse: toWorkspaceResponse,
  });
}
