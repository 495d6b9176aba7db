/** Makes what the network command `command` needs current (the contract for `up`, the build); answers the build's directory. */
export function prepare(command: string | undefined, say?: (line: string) => void): Promise<string>
/** Runs the compiled network command of a build, in this process, with the arguments of process.argv. */
export function runCli(buildDir: string): Promise<void>
