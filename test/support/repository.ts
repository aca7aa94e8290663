import { ConfigProvider, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import * as ServerConfig from "../../packages/server/src/config/ServerConfig.js"
import * as Database from "../../packages/server/src/sql/Database.js"
import * as ReadReplica from "../../packages/server/src/sql/ReadReplica.js"
import { createDatabase, databaseEnv } from "./database.js"

/**
 * `layer` (a repository) on a fresh test database that the server's
 * `Database.layer` migrates, dropped when the layer is released; the
 * `SqlClient` is provided alongside, for seeding and reading (and as the reads' client, `ReadSql`).
 */
export const onFreshDatabase = <A, E>(layer: Layer.Layer<A, E, SqlClient.SqlClient | Database.Sessions | ReadReplica.ReadSql>) =>
  Layer.unwrap(Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(Effect.promise(createDatabase), (db) => Effect.promise(db.drop))
    const env = { ...databaseEnv(db.url), LOG_LEVEL: "none" }
    return layer.pipe(
      Layer.provideMerge(ReadReplica.layer),
      Layer.provideMerge(Database.layer),
      Layer.provide(ServerConfig.layer),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))
    )
  }))
