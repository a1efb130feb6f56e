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
