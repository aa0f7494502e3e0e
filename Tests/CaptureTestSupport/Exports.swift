// The suites that use the camera models wait with TestTime and move a ManualTimekeeper: both
// come with this module, as they did before they moved to TimeTestSupport (which the suites
// of modules without cameras, the HTTP server's, use alone).
@_exported import TimeTestSupport
