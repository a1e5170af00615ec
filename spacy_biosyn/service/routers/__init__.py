"""The service's endpoints by concern: `link` links texts and mention
strings, `meta` tells how the service stands and what it serves."""
