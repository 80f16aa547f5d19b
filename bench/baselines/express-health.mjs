// Baseline: a bare Express 5 app answering the same liveness JSON as GET /health.
import express from 'express';

const app = express();
app.disable('x-powered-by');
app.get('/health', (_req, res) => {
  res.json({ status: 'ok', project_slug: 'subscription-service', environment: 'production' });
});
app.listen(Number(process.env.PORT), '127.0.0.1');
