echo tool
