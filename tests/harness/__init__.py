"""The test harness, read like the product: `runtime` starts the real local runtime,
`pool` shares runtimes between tests, `scenarios` describes a scripted upstream, and
`client` reads the Worker's protocol as a black box."""
