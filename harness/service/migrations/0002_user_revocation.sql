-- The organizer can revoke a service user: their token is refused from then on; their
-- submissions and runs stay (the rows other tables point at are never deleted).

ALTER TABLE users ADD COLUMN revoked_at TEXT;  -- NULL while the user may submit (UTC, ISO 8601)
