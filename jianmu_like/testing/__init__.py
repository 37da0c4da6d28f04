"""testing."""
