# Image for the api, worker and migrate services (see docker-compose.yml); the command picks the role.
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
# Sources listed explicitly (what tsconfig.build.json and the build script use), so a local
# node_modules, .data or .tools never ends up in the image.
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY api ./api
COPY activities ./activities
COPY workflows ./workflows
COPY worker ./worker
COPY domain ./domain
COPY db ./db
COPY platform ./platform
COPY dashboard ./dashboard
RUN npm run build

FROM node:24-slim
ENV NODE_ENV=production
# Two glibc malloc arenas, as scripts/node24.sh sets for the npm scripts (why: there).
ENV MALLOC_ARENA_MAX=2
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
USER node
EXPOSE 3000
CMD ["node", "dist/api/main.js"]
