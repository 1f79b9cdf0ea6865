package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
)

// NOTE(skeleton): the data sources issue replaces this file.

var _ datasource.DataSource = (*healthDataSource)(nil)

type healthDataSource struct{ data *providerData }

// NewHealthDataSource is the proxy_health data source factory.
func NewHealthDataSource() datasource.DataSource { return &healthDataSource{} }

func (d *healthDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_health"
}

func (d *healthDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{Attributes: map[string]schema.Attribute{"ready": schema.BoolAttribute{Computed: true}}}
}

func (d *healthDataSource) Read(context.Context, datasource.ReadRequest, *datasource.ReadResponse) {}
