import { DatabaseError } from '../errors.js'

/**
 * The oldest PostgreSQL this engine is verified on (server_version_num): an older server is refused at connect rather
 * than failing later on SQL it does not take.
 */
export const MIN_SERVER_VERSION = 180000

/** Why a server of this version is refused, or undefined when it is not. */
export function serverVersionRefusal(versionNum: number, version: string, where: string): DatabaseError | undefined {
  if (versionNum >= MIN_SERVER_VERSION) return undefined
  const oldest = `${Math.floor(MIN_SERVER_VERSION / 10000)}`
  return new DatabaseError('DB_MIGRATION', `the database ${where} runs PostgreSQL ${version}; this node needs PostgreSQL ${oldest} or later`)
}
