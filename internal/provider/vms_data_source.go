package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
)

// NOTE(skeleton): the data sources issue replaces this file.

var _ datasource.DataSource = (*vmsDataSource)(nil)

type vmsDataSource struct{ data *providerData }

// NewVMsDataSource is the proxy_vms data source factory.
func NewVMsDataSource() datasource.DataSource { return &vmsDataSource{} }

func (d *vmsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_vms"
}

func (d *vmsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{Attributes: map[string]schema.Attribute{"id": schema.StringAttribute{Computed: true}}}
}

func (d *vmsDataSource) Read(context.Context, datasource.ReadRequest, *datasource.ReadResponse) {}
