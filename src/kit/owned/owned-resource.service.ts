import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { ConflictError, NotFoundError } from '../../common/errors/app-error.js';
import { PrismaService, type Tx } from '../../infra/prisma/prisma.service.js';
import type { SqlParams } from '../../infra/prisma/sql-params.js';
import { type AuditDetails, fieldsChanged } from '../../modules/audit/audit.details.js';
import { type AuditEntry, AuditService, userActor } from '../../modules/audit/audit.service.js';
import type { Principal } from '../../common/principal.js';
import { isUuid } from '../../common/validation/uuid.js';
import type { OwnedResourceDefinition } from './owned-resource.js';
import { OwnedRepository, type OwnedRow } from './owned.repository.js';
import { type Page, type PageRequest, pageOf, pageOffset } from '../../common/paging/paging.js';

/**
 * Create, list, get, update and delete of a user-owned resource (spec: Owned-resource pattern). A concrete
 * service only supplies `resource`; ownership always comes from the principal, every read and write is
 * scoped by it, and each change is audited in the transaction that makes it.
 */
@Injectable()
export abstract class OwnedResourceService<
  Row extends OwnedRow,
  CreateDto extends object,
  UpdateDto extends object,
  Response,
> {
  protected abstract readonly resource: OwnedResourceDefinition<Row, CreateDto, UpdateDto, Response>;
  private repositoryInstance?: OwnedRepository<Row>;

  constructor(
    protected readonly prisma: PrismaService,
    protected readonly audit: AuditService,
    protected readonly config: AppConfig,
  ) {}

  protected get repository(): OwnedRepository<Row> {
    return (this.repositoryInstance ??= new OwnedRepository(this.resource.table, this.resource.sqlTable));
  }

  async create(principal: Principal, dto: CreateDto): Promise<Response> {
    const row = await this.insert(principal, this.resource.toCreate(dto));
    return this.resource.toResponse(row);
  }

  async list(principal: Principal, request: PageRequest): Promise<Page<Response>> {
    const userId = principal.user.id;
    const skip = pageOffset(request);
    const rows = await this.repository.page(this.prisma, userId, skip, request.pageSize);
    // A short, non-empty page (or a short first page) already tells the total: skip the count.
    const total =
      rows.length < request.pageSize && (rows.length > 0 || skip === 0)
        ? skip + rows.length
        : await this.repository.countAlone(this.prisma, userId);
    return pageOf(
      rows.map((row) => this.resource.toResponse(row)),
      total,
      request,
    );
  }

  async get(principal: Principal, id: string): Promise<Response> {
    return this.resource.toResponse(await this.findOwnedOrFail(principal, id));
  }

  /**
   * Changes only the supplied fields, audited in the same statement. An empty patch changes nothing and
   * writes no audit entry.
   */
  async update(principal: Principal, id: string, dto: UpdateDto): Promise<Response> {
    const toUpdate = this.resource.toUpdate;
    if (!toUpdate) throw new Error(`${this.resource.type} has no update`);
    const changed = fieldsChanged(dto);
    if (changed.length === 0) return this.get(principal, id);
    this.assertId(id);
    const row = await this.repository.updateOwnedWritten(
      this.prisma,
      principal.user.id,
      id,
      toUpdate(dto),
      this.auditPart(principal, 'updated', id, { fields_changed: changed }),
    );
    if (!row) throw this.notFound();
    return this.resource.toResponse(row);
  }

  async remove(principal: Principal, id: string): Promise<void> {
    this.assertId(id);
    const deleted = await this.repository.deleteOwnedWritten(
      this.prisma,
      principal.user.id,
      id,
      this.auditPart(principal, 'deleted', id, {}),
    );
    if (!deleted) throw this.notFound();
  }

  /**
   * Inserts a row for the principal within the tier limit and audits `<type>.created`, in one statement
   * (see OwnedRepository.insertWithinLimit). `details` sees the fields inserted, as the audit entry must be
   * known before the statement runs.
   */
  protected async insert(
    principal: Principal,
    data: Record<string, unknown>,
    details: AuditDetails = {},
  ): Promise<Row> {
    const limit = this.limitOf(principal);
    const row = await this.repository.insertWithinLimit(
      this.prisma,
      principal.user.id,
      data,
      limit && {
        max: limit.max,
        countedSql: this.resource.limitSql,
        lockKey: `owned:${this.resource.type}:${principal.user.id}`,
      },
      (params, id, writtenRows) => this.auditPart(principal, 'created', id, details)(params, writtenRows),
    );
    if (!row) {
      throw new ConflictError(
        `The ${limit!.tier} plan allows at most ${limit!.max} ${this.resource.plural}. Delete one or upgrade.`,
        'limit_reached',
      );
    }
    return row;
  }

  protected async findOwnedOrFail(principal: Principal, id: string): Promise<Row> {
    this.assertId(id);
    const row = await this.repository.findOwned(this.prisma, principal.user.id, id);
    if (!row) throw this.notFound();
    return row;
  }

  /** Missing, another user's and malformed ids all get this same answer (spec rule 1: 404, never 403). */
  protected notFound(): NotFoundError {
    return new NotFoundError(`The ${this.resource.label} does not exist.`);
  }

  protected assertId(id: string): void {
    if (!isUuid(id)) throw this.notFound();
  }

  protected record(
    tx: Tx,
    principal: Principal,
    action: string,
    resourceId: string,
    details: AuditDetails,
  ): Promise<void> {
    return this.audit.record(tx, this.entry(principal, action, resourceId, details));
  }

  /** The audit entry of a change as a part of the statement that makes it (see OwnedRepository.written). */
  private auditPart(
    principal: Principal,
    action: string,
    resourceId: string,
    details: AuditDetails,
  ): (params: SqlParams, writtenRows: string) => string {
    return (params, writtenRows) =>
      this.audit.recordManyPart(
        params,
        [{ ...this.entry(principal, action, resourceId, details), ord: 0 }],
        writtenRows,
      );
  }

  private entry(principal: Principal, action: string, resourceId: string, details: AuditDetails): AuditEntry {
    const identityUserId = principal.user.identityUserId;
    return {
      actor: userActor(identityUserId),
      action: `${this.resource.type}.${action}`,
      userId: identityUserId,
      resourceType: this.resource.type,
      resourceId,
      details: { ...details, via: principal.via },
    };
  }

  /** The principal's tier limit on this resource, or null when it has none. */
  private limitOf(principal: Principal): { tier: string; max: number } | null {
    const key = this.resource.limit;
    if (!key) return null;
    const { tiers } = this.config.project;
    const tier = tiers[principal.user.currentTier] ? principal.user.currentTier : 'FREE';
    const max = tiers[tier]?.limits[key];
    return max === undefined ? null : { tier, max };
  }
}
