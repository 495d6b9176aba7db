import type { Timestamp } from '../core/time.js'
import type { NamespacesRepo } from '../db/repos/namespaces.js'
import { DEFAULT_NAMESPACE } from '../model/index.js'

/** FireFly's Namespace: `networkName` is the name other members know it by, which here is its own name. */
export interface NamespaceView {
  name: string
  networkName: string
  description: string
  created: Timestamp
}

/**
 * The namespaces this member has (FireFly's namespace manager, read-only). Any name is usable without being declared,
 * so the list is `default`, which always exists, and every namespace that holds something here. A namespace's
 * `created` is when it first held something; for one that holds nothing yet (`default` on a new member, or a name
 * asked for by `namespaces/{ns}`), when this node started, as FireFly dates the namespaces it loads at start.
 */
export class Namespaces {
  constructor(private readonly deps: { repo: NamespacesRepo; started: Timestamp }) {}

  list(): NamespaceView[] {
    const names = new Set([DEFAULT_NAMESPACE, ...this.deps.repo.names()])
    return [...names].sort().map((n) => this.get(n))
  }

  get(name: string): NamespaceView {
    return { name, networkName: name, description: '', created: this.deps.repo.firstUse(name) ?? this.deps.started }
  }
}
