import { v1Foundation } from './v1-foundation.js'
import { v2Messaging } from './v2-messaging.js'
import { v3Data } from './v3-data.js'
import { v4Tidy } from './v4-tidy.js'
import { v5Groups } from './v5-groups.js'
import { v6Private } from './v6-private.js'
import { v7HeldPins } from './v7-held-pins.js'
import { v8DeliveryBlobs } from './v8-delivery-blobs.js'
import { v9Subscriptions } from './v9-subscriptions.js'
import { v10TraceTimes } from './v10-trace-times.js'
import { v11WaitingPins } from './v11-waiting-pins.js'
import { v12MessageIndexes } from './v12-message-indexes.js'
import { v13Operations } from './v13-operations.js'
import { v14PinsPerSigner } from './v14-pins-per-signer.js'
import { v15ReceivedBlobs } from './v15-received-blobs.js'
import { v16IdentityRegistration } from './v16-identity-registration.js'

/** Every schema version in order; the database applies those it has not yet applied, once. */
export const migrations = [v1Foundation, v2Messaging, v3Data, v4Tidy, v5Groups, v6Private, v7HeldPins, v8DeliveryBlobs, v9Subscriptions, v10TraceTimes, v11WaitingPins, v12MessageIndexes, v13Operations, v14PinsPerSigner, v15ReceivedBlobs, v16IdentityRegistration]
