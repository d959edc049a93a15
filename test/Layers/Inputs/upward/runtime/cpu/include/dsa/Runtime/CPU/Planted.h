// A CPU runtime header.
