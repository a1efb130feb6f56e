-- A lease's epoch comes from one sequence, so no two leases of a session ever have the same one.
-- A session that leaves memory gives its lease up in the background, matching the epoch it held
-- (crates/store/src/postgres/lease.rs); were a lease's row deleted and made again with its count
-- restarted, a release running late would match, and end, the newer lease.
CREATE SEQUENCE lease_epochs;
SELECT setval('lease_epochs', COALESCE((SELECT MAX(epoch) FROM leases), 0) + 1, false);
