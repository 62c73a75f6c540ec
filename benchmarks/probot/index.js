// Probot doing what plangate's webhook path does: verify the signature, route by event and
// action, enqueue one job on Redis (LPUSH of a JSON job, like a queue push), answer.
import http from "node:http";
import { Redis } from "ioredis";
import { Probot, createNodeMiddleware } from "probot";

const redis = new Redis(process.env.REDIS_URL);
const app = (probot) => {
  probot.on(["pull_request.opened", "pull_request.synchronize"], async (context) => {
    const pr = context.payload.pull_request;
    const job = { repo: context.payload.repository.full_name, pr: pr.number, sha: pr.head.sha };
    await redis.lpush("probot:queue", JSON.stringify(job));
  });
};
const probot = new Probot({ appId: 1, privateKey: process.env.PRIVATE_KEY, secret: process.env.WEBHOOK_SECRET, logLevel: process.env.LOG_LEVEL || "warn" });
const middleware = await createNodeMiddleware(app, { probot, webhooksPath: "/webhook" });
http.createServer(middleware).listen(Number(process.env.PORT), "127.0.0.1");
