package pb

// udplbd2 nests the permission enums in TokenPermission; these names keep
// them short (pb.ResourceType_ALL rather than pb.TokenPermission_ALL), and
// as they were when the .proto declared them at top level.
type (
	ResourceType   = TokenPermission_ResourceType
	PermissionType = TokenPermission_PermissionType
)

const (
	ResourceType_ALL           = TokenPermission_ALL
	ResourceType_LOAD_BALANCER = TokenPermission_LOAD_BALANCER
	ResourceType_RESERVATION   = TokenPermission_RESERVATION
	ResourceType_SESSION       = TokenPermission_SESSION

	PermissionType_READ_ONLY = TokenPermission_READ_ONLY
	PermissionType_REGISTER  = TokenPermission_REGISTER
	PermissionType_RESERVE   = TokenPermission_RESERVE
	PermissionType_UPDATE    = TokenPermission_UPDATE
)

var (
	ResourceType_name    = TokenPermission_ResourceType_name
	ResourceType_value   = TokenPermission_ResourceType_value
	PermissionType_name  = TokenPermission_PermissionType_name
	PermissionType_value = TokenPermission_PermissionType_value
)
