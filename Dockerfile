# One image for every service; the command picks which one runs (`bun run gateway|registry|deliverer|matcher`).
FROM oven/bun:1.4.5 AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# The workspace's manifest: the install reads it (the console bundles the client's source from clients/).
COPY clients/typescript/package.json clients/typescript/
# Bun reads package-lock.json's pinned versions. Dev tools (buf, drizzle-kit, tsc, bun itself) stay out of the image.
RUN bun install --production --ignore-scripts

FROM oven/bun:1.4.5-slim
WORKDIR /app
ENV NODE_ENV=production
# In a container every listener must take traffic from outside it (loopback is the default elsewhere).
ENV BIND_HOST=0.0.0.0
COPY --from=deps /app/node_modules ./node_modules
COPY . .
USER bun
# gateway, registry, deliverer, matcher HTTP ports; registry and deliverer gRPC ports
EXPOSE 3000 3001 3002 3003 50051 50052
STOPSIGNAL SIGTERM
CMD ["bun", "run", "gateway"]
