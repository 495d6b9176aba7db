/**
 * FireFly's name rule, for namespaces, topics, tags, org and node names and datatype names: 1-64 letters, digits,
 * '.', '_' or '-', starting and ending with a letter or digit.
 */
export const NAME_RE = /^[0-9a-zA-Z]([0-9a-zA-Z._-]{0,62}[0-9a-zA-Z])?$/
