import type { NextFunction, Request, Response } from 'express';
import type { MetricsService } from './metrics.service.js';

/** Request rate and latency by route template (never the raw path: ids would explode the label set). */
export function httpMetricsMiddleware(metrics: MetricsService) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const stop = metrics.httpDuration.startTimer();
    res.on('finish', () => {
      const template = req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : '';
      // Nest answers unknown paths from a catch-all route ("/api/v1*path").
      const route = template && !template.includes('*') ? template : 'unmatched';
      stop({ method: req.method, route });
      metrics.httpRequests.inc({ method: req.method, route, status: String(res.statusCode) });
    });
    next();
  };
}
