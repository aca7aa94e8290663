/** Reciprocal rank fusion's constant: how little the first ranks count more than the next. */
export const rrfK = 60

/**
 * Reciprocal rank fusion: each post scores `1 / (k + rank)` in every list it
 * is in, summed, so a post that both the meaning and the words find comes
 * first. Ties keep the order of the first list, then the next.
 */
export const fuse = <A extends { readonly id: string }>(lists: ReadonlyArray<ReadonlyArray<A>>, limit: number): Array<A> => {
  const scored = new Map<string, { readonly item: A; score: number; readonly order: number }>()
  let order = 0
  for (const list of lists) {
    list.forEach((item, rank) => {
      const seen = scored.get(item.id)
      if (seen === undefined) scored.set(item.id, { item, score: 1 / (rrfK + rank + 1), order: order++ })
      else seen.score += 1 / (rrfK + rank + 1)
    })
  }
  return [...scored.values()].sort((a, b) => b.score - a.score || a.order - b.order).slice(0, limit).map((s) => s.item)
}
