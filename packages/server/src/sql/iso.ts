/** A `Clock` time in milliseconds as the ISO 8601 text PostgreSQL reads for a `timestamptz` parameter. */
export const iso = (ms: number): string => new Date(ms).toISOString()
