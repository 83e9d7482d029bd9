-- import_error.lua: fails while being imported; a second import must fail the same way.
error("failing at import")
