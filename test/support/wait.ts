/**
 * Polls `probe` every `everyMs` until it yields something other than
 * `undefined`, and resolves with it; fails after `timeoutMs`, naming `what`
 * and the last thing `describe` made of the probe's state.
 */
export const eventually = async <A>(
  what: string,
  probe: () => Promise<A | undefined>,
  options: { readonly timeoutMs?: number; readonly everyMs?: number; readonly describe?: () => string } = {}
): Promise<A> => {
  const { everyMs = 50, timeoutMs = 20_000 } = options
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${options.describe ? `: ${options.describe()}` : ""}`)
    }
    await new Promise((r) => setTimeout(r, everyMs))
  }
}
