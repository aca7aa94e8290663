export * from "./Api.js"
export * from "./client.js"
export * from "./errors.js"
export * from "./schemas.js"
