import { Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { createServer, type Server } from 'node:http';
import { AppConfig } from '../../config/app-config.js';
import { MetricsService } from './metrics.service.js';

/**
 * The API's /metrics on its own port (METRICS_PORT, 0 = off), never on the public port and never under
 * /api/v1: scrapers reach it on the private network only.
 */
@Injectable()
export class MetricsServer implements OnApplicationBootstrap, OnModuleDestroy {
  private server: Server | null = null;
  private readonly logger = new Logger(MetricsServer.name);

  constructor(
    private readonly config: AppConfig,
    private readonly metrics: MetricsService,
  ) {}

  get port(): number | null {
    const address = this.server?.address();
    return address && typeof address === 'object' ? address.port : null;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.metricsPort) return;
    this.server = createServer((req, res) => {
      if (req.method !== 'GET' || req.url !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      this.metrics.render().then(
        ({ contentType, body }) => res.writeHead(200, { 'content-type': contentType }).end(body),
        () => res.writeHead(500).end(),
      );
    });
    await new Promise<void>((resolve) => this.server!.listen(this.config.metricsPort, resolve));
    this.logger.log({ port: this.port }, 'metrics listening');
  }

  async onModuleDestroy(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}
