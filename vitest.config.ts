import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // expect.poll's default (1 s) is one Chromium round trip too few on this 2-core machine under the whole suite:
    // a poll that passes is not slowed, one that fails says so after 5 s.
    expect: { poll: { timeout: 5_000 } },
    pool: "forks",
    maxWorkers: 2,
    reporters: ["default", "./test/support/summary-reporter.ts"]
  }
})
