-- The gateways that started on this database, by their node id, and the address each advertises.
-- A running gateway holds an advisory lock on its id and one on its address, on a connection of
-- its own (crates/store/src/postgres/identity.rs), so a second gateway with either is refused;
-- this table names the gateway that has an address.
CREATE TABLE nodes (
    node       TEXT COLLATE "C" PRIMARY KEY,
    address    TEXT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX nodes_by_address ON nodes (address);

-- Leases left by a gateway that died while its sessions were at rest: swept a lease after they ran
-- out (crates/store/src/postgres/lease.rs).
CREATE INDEX leases_by_expiry ON leases (expires_at);
