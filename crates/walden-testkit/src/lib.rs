//! Test support for Walden: throwaway PostgreSQL 15 servers, `pg_waldump`
//! runs, and parsing of `pg_waldump`'s output.
