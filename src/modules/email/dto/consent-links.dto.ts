import { ApiProperty } from '@nestjs/swagger';

// The JSON answers of the e-mail links' POSTs (mail clients, scripts); a browser's form gets a page.

/** POST /api/v1/email/unsubscribe */
export class UnsubscribedDto {
  /** Always true: also when the address was unsubscribed already. */
  @ApiProperty({ type: Boolean, enum: [true], example: true })
  unsubscribed!: true;
}

/** POST /api/v1/email/confirm */
export class SubscribedDto {
  /** Always true: also when consent was given already. */
  @ApiProperty({ type: Boolean, enum: [true], example: true })
  subscribed!: true;
}
