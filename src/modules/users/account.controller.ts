import { Body, Controller, Delete, Get, Header, HttpCode, Post, StreamableFile } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBearerAuth,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiTags,
} from '@nestjs/swagger';
import type { Response } from 'express';
import { AllowDeleted } from '../../common/decorators/allow-deleted.decorator.js';
import { CurrentUser } from '../../common/decorators/current-user.decorator.js';
import { RefuseApiKeys } from '../../common/decorators/refuse-api-keys.decorator.js';
import { sendProblem, toProblem } from '../../common/filters/problem-details.filter.js';
import { ApiErrors } from '../../common/openapi/api-errors.decorator.js';
import type { User } from '../../generated/prisma/client.js';
import { AccountDeletionService } from './account-deletion.service.js';
import { EXPORT_SECTIONS } from './account-export.repository.js';
import { AccountExportService } from './account-export.service.js';
import { DeletionScheduledDto, MeResponseDto } from './dto/me-response.dto.js';
import { SignupMetadataDto, SignupMetadataResultDto } from './dto/signup-metadata.dto.js';
import { ProfileService } from './profile.service.js';
import { USER_ERASED } from './me.controller.js';

/**
 * The export's body, its sections read from EXPORT_SECTIONS so the document and the typed client name every
 * table the bundle holds (rows are the tables' columns in snake_case, not a stable API shape).
 */
const EXPORT_BUNDLE_SCHEMA = {
  type: 'object',
  required: ['generated_at', 'user', 'credits', ...EXPORT_SECTIONS.map((section) => section.name)],
  properties: {
    generated_at: { type: 'string', format: 'date-time' },
    user: { type: 'object', additionalProperties: true },
    credits: {
      type: 'object',
      required: ['balance', 'plan_remaining', 'purchased_remaining', 'plan_expires_at'],
      properties: {
        balance: { type: 'integer' },
        plan_remaining: { type: 'integer' },
        purchased_remaining: { type: 'integer' },
        plan_expires_at: { type: 'string', format: 'date-time', nullable: true },
      },
    },
    ...Object.fromEntries(
      EXPORT_SECTIONS.map((section) => [
        section.name,
        { type: 'array', items: { type: 'object', additionalProperties: true } },
      ]),
    ),
  },
};

@ApiTags('current user')
@ApiBearerAuth()
@Controller('account/me')
export class AccountController {
  constructor(
    private readonly profile: ProfileService,
    private readonly deletion: AccountDeletionService,
    private readonly exports: AccountExportService,
  ) {}

  /** First-touch UTM attribution; applied once, later calls answer `recorded: false` and change nothing. */
  @ApiOperation({
    summary: 'Record first-touch attribution',
    description:
      'UTM parameters, referrer and landing page the frontend cached at landing; applied once, later calls answer `recorded: false` and change nothing.',
  })
  @Post('signup-metadata')
  @HttpCode(200)
  @ApiOkResponse({ type: SignupMetadataResultDto })
  signupMetadata(
    @CurrentUser() user: User,
    @Body() dto: SignupMetadataDto,
  ): Promise<SignupMetadataResultDto> {
    return this.profile.recordAttribution(user, dto);
  }

  /**
   * Every user-linked table and the caller's audit entries as one JSON attachment (streamed). Needs an
   * interactive sign-in: a leaked API key must not be able to download everything.
   */
  @ApiOperation({
    summary: 'Export my data',
    description:
      "Every user-linked table and the caller's audit entries as one JSON attachment (streamed). Needs an interactive sign-in: refused with an API key.",
  })
  @Get('export')
  @AllowDeleted()
  @RefuseApiKeys()
  @ApiErrors({ 404: { user_not_found: USER_ERASED } })
  @Header('Cache-Control', 'no-store')
  @ApiProduces('application/json')
  @ApiOkResponse({
    description:
      'An attachment (`Content-Disposition`): `generated_at`, `user` (the profile row), `credits` (the balance as GET /api/v1/credits counts it), then one array of rows per user-linked table.',
    schema: EXPORT_BUNDLE_SCHEMA,
  })
  async export(@CurrentUser() user: User): Promise<StreamableFile> {
    const { filename, stream } = await this.exports.open(user);
    return new StreamableFile(stream, {
      type: 'application/json; charset=utf-8',
      disposition: `attachment; filename="${filename}"`,
    }).setErrorHandler((err, res) => {
      // Once bytes are out, cutting the connection is the only honest signal: a closed JSON would lie.
      if (res.headersSent) return res.destroy?.(err);
      const { problem, headers } = toProblem(err, undefined);
      sendProblem(res as unknown as Response, problem, headers);
    });
  }

  /** Schedules the account for deletion: 30 days to restore, then it is erased. Not with an API key. */
  @ApiOperation({
    summary: 'Delete my account',
    description:
      'Schedules the account for deletion: 30 days to restore, then it is erased. Refused with an API key.',
  })
  @Delete()
  @HttpCode(202)
  @RefuseApiKeys()
  @ApiAcceptedResponse({ type: DeletionScheduledDto })
  @ApiErrors({ 403: { account_deleted: 'already scheduled for deletion' } })
  async requestDeletion(@CurrentUser() user: User): Promise<DeletionScheduledDto> {
    const { deletedAt, hardDeleteAfter } = await this.deletion.requestDeletion(user);
    return { deleted_at: deletedAt.toISOString(), hard_delete_after: hardDeleteAfter.toISOString() };
  }

  /**
   * Cancels a pending deletion within the grace period; answers the /me body. Not with an API key: after
   * the identity provider deleted the user (`user.deleted`) it issues no more tokens, and a key left over
   * must not undo that deletion.
   */
  @ApiOperation({
    summary: 'Restore my account',
    description:
      'Cancels a pending deletion within the grace period; answers the /me body. Refused with an API key.',
  })
  @Post('restore')
  @HttpCode(200)
  @AllowDeleted()
  @RefuseApiKeys()
  @ApiOkResponse({ type: MeResponseDto })
  @ApiErrors({
    404: { user_not_found: USER_ERASED },
    409: {
      restore_window_closed: 'the grace period is over and the account is being erased',
      deleted_by_identity_provider:
        'the account was deleted at the identity provider (user.deleted), which alone can bring it back',
    },
  })
  async restore(@CurrentUser() user: User): Promise<MeResponseDto> {
    await this.deletion.restore(user);
    return this.profile.me(user.id);
  }
}
